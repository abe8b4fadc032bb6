import { expect } from 'chai';
import { metricsText } from '../../src/index.js';
import { newCounters } from '../../src/transport/call/stats.js';

describe('metricsText', () => {
  it('writes every counter as a Prometheus sample with HELP and TYPE lines', () => {
    const stats = { ...newCounters(), calls: 12, hedgesWon: 2, budgetTokens: 97.5 };
    const text = metricsText(stats, { store: 'rates "eu"' });
    expect(text).to.include(
      '# TYPE shameless_client_calls_total counter\n' +
        'shameless_client_calls_total{store="rates \\"eu\\""} 12\n',
    );
    expect(text).to.include('shameless_client_hedges_won_total{store="rates \\"eu\\""} 2\n');
    expect(text).to.include('# TYPE shameless_client_budget_tokens gauge\n');
    expect(text).to.include('shameless_client_budget_tokens{store="rates \\"eu\\""} 97.5\n');
    const samples = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    expect(samples).to.have.length(Object.keys(stats).length);
    expect(metricsText(stats)).to.include('shameless_client_calls_total 12\n');
  });
});
