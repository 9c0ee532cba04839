// Plain orderings and number text without Intl: String.localeCompare and toLocaleString load ICU,
// which costs ~10 ms on every start of a command that uses them (`atlas hook status` does).

/** Orders by UTF-16 code units: right for ISO timestamps and ids, and the same on every machine. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** 1234567 → "1,234,567" (what toLocaleString('en-US') prints for integers). */
export function groupThousands(n: number): string {
  const [whole, fraction] = String(n).split('.');
  const grouped = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}
