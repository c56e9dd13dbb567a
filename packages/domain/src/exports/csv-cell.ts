/** A CSV cell: quoted only when it must be (RFC 4180), so plain headers stay as the platform wrote them. */
export function csvCell (text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}
