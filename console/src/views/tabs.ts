/**
 * Accessible tabs (WAI-ARIA tabs pattern): a tablist of buttons, arrow keys, Home and End move
 * between them, the selected tab's panel is shown and its view mounted; leaving a tab disposes
 * its view.
 */
import { el } from '../dom.js';
import type { View } from '../context.js';

/** One tab: its label and how to mount its view in a panel. */
export interface TabSpec {
  id: string;
  label: string;
  mount(panel: HTMLElement): View;
}

/** Renders the tabs; returns the root and a dispose for the current view. */
export function tabs(specs: TabSpec[], idPrefix: string): { root: HTMLElement; dispose(): void } {
  const list = el('div', { role: 'tablist', 'aria-label': 'Session views' });
  const panels = el('div', { class: 'panels' });
  let current: View | undefined;
  const buttons = specs.map((spec, i) => {
    const tabId = `${idPrefix}-tab-${spec.id}`;
    const panelId = `${idPrefix}-panel-${spec.id}`;
    const b = el('button', {
      type: 'button',
      role: 'tab',
      id: tabId,
      'aria-controls': panelId,
      'aria-selected': 'false',
      tabindex: '-1',
      text: spec.label,
      onclick: () => select(i),
      onkeydown: (ev: Event) => onKey(ev as KeyboardEvent, i),
    });
    panels.append(
      el('div', { role: 'tabpanel', id: panelId, 'aria-labelledby': tabId, hidden: true, tabindex: '0' }),
    );
    return b;
  });
  list.append(...buttons);

  function select(i: number, focus = false): void {
    current?.dispose();
    buttons.forEach((b, j) => {
      b.setAttribute('aria-selected', String(i === j));
      b.tabIndex = i === j ? 0 : -1;
      const panel = panels.children[j] as HTMLElement;
      panel.hidden = i !== j;
      if (i !== j) panel.replaceChildren();
    });
    current = specs[i]!.mount(panels.children[i] as HTMLElement);
    if (focus) buttons[i]!.focus();
  }

  function onKey(ev: KeyboardEvent, i: number): void {
    const n = buttons.length;
    const next: Record<string, number> = {
      ArrowRight: (i + 1) % n,
      ArrowLeft: (i - 1 + n) % n,
      Home: 0,
      End: n - 1,
    };
    const to = next[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    select(to, true);
  }

  select(0);
  return { root: el('div', { class: 'tabs' }, list, panels), dispose: () => current?.dispose() };
}
