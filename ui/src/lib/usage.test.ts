import { describe, expect, it } from 'vitest';
import { costText, tokensText } from './usage';

describe('tokens and cost in words', () => {
  it('sums in and out, and names the cached part and the cost only when there are some', () => {
    expect(tokensText({ input_tokens: 3_180, output_tokens: 30, cache_read_tokens: 2_900, cost_micro_usd: 400 })).toBe(
      '3,210 tokens (2,900 cached) · $0.0004',
    );
    expect(tokensText({ input_tokens: 1_500, output_tokens: 9 })).toBe('1,509 tokens');
    expect(tokensText({ input_tokens: 1_500, output_tokens: 9, cache_read_tokens: 0, cost_micro_usd: 0 })).toBe('1,509 tokens');
  });

  it('writes dollars to the cent, and fractions of a cent to four places', () => {
    expect(costText(1_250_000)).toBe('$1.25');
    expect(costText(12_000)).toBe('$0.01');
    expect(costText(417)).toBe('$0.0004');
    expect(costText(30)).toBe('<$0.0001');
  });
});
