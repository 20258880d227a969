/**
 * A history as searchable text: its JSON form with every payload's data decoded (payload data is base64
 * there, so a plain search would miss what payloads hold).
 */
export function historyText(history: unknown): string {
  const raw = JSON.stringify(history);
  const payloads = [...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((match) =>
    Buffer.from(match[1]!, 'base64').toString('utf8'),
  );
  return [raw, ...payloads].join('\n');
}
