/**
 * Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), parsed exactly, for one
 * purpose: comparing a session's request or limit with the operator's default so that a filled-in
 * side never makes request > limit (pod.ts `resources()`). Pure; no floating point: a quantity is
 * held as a fraction of two BigInts, so `0.1` and `100m`, or `1Gi` and `1073741824`, compare equal.
 *
 * Grammar (as the API server's and the CRD's pattern):
 *   <quantity> ::= <signedNumber><suffix>
 *   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
 *                | e<signedNumber> | E<signedNumber>   (a decimal exponent, an integer here)
 */

/** A parsed quantity: value = numerator / denominator (denominator > 0). */
export interface Quantity {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const SHAPE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
/** Largest decimal exponent accepted (the API server's quantities stop far below it). */
const MAX_EXPONENT = 1000;

/** Parses a quantity (a string, or a number as the CRD's int-or-string allows); undefined when invalid. */
export function parseQuantity(value: string | number): Quantity | undefined {
  const text = typeof value === 'number' ? numberText(value) : value.trim();
  if (text === undefined || text.length > 128) return undefined;
  const match = SHAPE.exec(text);
  if (!match) return undefined;
  const [, sign = '', digits = '', suffix = ''] = match;
  const [whole = '', fraction = ''] = digits.split('.');
  const mantissa = BigInt(`${whole}${fraction}` || '0');
  return scale(sign === '-' ? -mantissa : mantissa, 10n ** BigInt(fraction.length), suffix);
}

/** Compares two quantities: negative when a < b, 0 when equal, positive when a > b. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const left = a.numerator * b.denominator;
  const right = b.numerator * a.denominator;
  return left < right ? -1 : left > right ? 1 : 0;
}

/**
 * The larger (`max`) or smaller (`min`) of two quantity texts, returned as given; undefined when
 * either does not parse (the caller then leaves the choice to the API server's validation).
 */
export function pickQuantity(which: 'max' | 'min', a: string, b: string): string | undefined {
  const qa = parseQuantity(a);
  const qb = parseQuantity(b);
  if (!qa || !qb) return undefined;
  const order = compareQuantities(qa, qb);
  return which === 'max' ? (order >= 0 ? a : b) : order <= 0 ? a : b;
}

/** Applies the suffix to numerator / denominator; undefined for an exponent out of range. */
function scale(numerator: bigint, denominator: bigint, suffix: string): Quantity | undefined {
  const binary = BINARY[suffix];
  if (binary !== undefined) return { numerator: numerator * 2n ** BigInt(binary), denominator };
  const exponent = decimalExponent(suffix);
  if (exponent === undefined) return undefined;
  return exponent >= 0
    ? { numerator: numerator * 10n ** BigInt(exponent), denominator }
    : { numerator, denominator: denominator * 10n ** BigInt(-exponent) };
}

function decimalExponent(suffix: string): number | undefined {
  const named = DECIMAL[suffix];
  if (named !== undefined) return named;
  if (!/^[eE]/.test(suffix)) return undefined;
  const exponent = Number(suffix.slice(1));
  return Number.isSafeInteger(exponent) && Math.abs(exponent) <= MAX_EXPONENT ? exponent : undefined;
}

/** A JSON number as quantity text: finite only; JavaScript's exponent form (1e+21) fits the grammar. */
function numberText(value: number): string | undefined {
  return Number.isFinite(value) ? String(value) : undefined;
}
