import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry';
import { promtool } from '../helpers/metrics';

const ALERTS = 'deploy/prometheus/alerts.yml';

/** Every series name Laurel exports (histograms with their _bucket, _sum and _count). */
function exported(): Set<string> {
  const names = new Set<string>();
  for (const m of registry.getMetricsAsArray()) {
    names.add(m.name);
    if (String(m.type) === 'histogram')
      for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
}

/** Metric names an expression file uses: laurel_* and the process/nodejs defaults. */
const usedNames = (text: string) => new Set(text.match(/\b(?:laurel|process|nodejs)_[a-z0-9_]+\b/g) ?? []);

describe('deploy/prometheus and deploy/grafana', () => {
  it('has alert rules promtool accepts, and they fire in promtool’s unit tests', () => {
    expect(promtool(['check', 'rules', ALERTS])).toContain('SUCCESS');
    expect(promtool(['test', 'rules', 'deploy/prometheus/alerts.test.yml'])).toContain('SUCCESS');
    expect(promtool(['check', 'config', 'deploy/prometheus/prometheus.yml'])).toContain('SUCCESS');
  });

  it('alerts on history lag, unreadable outbox records, webhook failures, outbox growth, scheduler lateness, 5xx, Redis and Postgres', () => {
    const text = readFileSync(ALERTS, 'utf8');
    for (const alert of [
      'LaurelHistoryBehind',
      'LaurelWebhookFailuresRising',
      'LaurelOutboxGrowing',
      'LaurelHistoryRecordsUnreadable',
      'LaurelSchedulerLate',
      'LaurelHigh5xxRate',
      'LaurelRedisDown',
      'LaurelPostgresDown',
    ]) {
      expect(text).toContain(`alert: ${alert}`);
    }
  });

  it('uses only metrics Laurel exports, in the alerts and in the Grafana dashboard', () => {
    const names = exported();
    const dashboard = readFileSync('deploy/grafana/laurel.json', 'utf8');
    const panels = (JSON.parse(dashboard) as { panels: Array<{ targets?: Array<{ expr: string }> }> }).panels;
    expect(panels.filter((p) => p.targets?.length).length).toBeGreaterThan(20);
    const unknown = [...usedNames(readFileSync(ALERTS, 'utf8')), ...usedNames(dashboard)].filter(
      (n) => !names.has(n),
    );
    expect(unknown).toEqual([]);
  });
});
