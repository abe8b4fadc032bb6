// A scrape of the server's Prometheus metrics (`serve --metrics-listen`), as each sample's value
// by its name and labels as the server writes them: `name` or `name{label="value"}`.

export function samplesOf(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const space = line.lastIndexOf(' ');
    if (space > 0 && !line.startsWith('#')) {
      samples.set(line.slice(0, space), Number(line.slice(space + 1)));
    }
  }
  return samples;
}

export async function scrapeMetrics(metricsUrl: string): Promise<Map<string, number>> {
  const response = await fetch(metricsUrl);
  return samplesOf(await response.text());
}
