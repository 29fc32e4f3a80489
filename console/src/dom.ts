/**
 * A tiny element builder. Every text a page shows goes in as text (textContent), never as HTML:
 * names, paths, outputs and errors come from sandboxes and are hostile.
 */

/** Attributes and properties of an element; `on*` functions become listeners. */
export type Props = Record<string, string | number | boolean | ((ev: Event) => void) | undefined>;

/** A child: an element, a text, or nothing. */
export type Child = Node | string | undefined | null | false;

/** Creates `<tag>` with props and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') node.addEventListener(name.slice(2).toLowerCase(), value);
    else if (name === 'text') node.textContent = String(value);
    else if (value === true) node.setAttribute(name, '');
    else node.setAttribute(name, String(value));
  }
  append(node, ...children);
  return node;
}

/** Appends children (texts as text nodes). */
export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    parent.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

/** Replaces an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A labelled input: `<label for=id>text</label><input id=id ...>`. */
export function field(
  id: string,
  label: string,
  props: Props = {},
): { row: HTMLElement; input: HTMLInputElement } {
  const input = el('input', { id, name: id, ...props });
  return { row: el('div', { class: 'field' }, el('label', { for: id, text: label }), input), input };
}

/** A button with a visible label (and an accessible one when the visible one is short). */
export function button(text: string, onClick: (ev: Event) => void, props: Props = {}): HTMLButtonElement {
  return el('button', { type: 'button', text, onclick: onClick, ...props });
}
