import { describe, expect, it } from 'vitest';
import { joinLabel } from './edges';

describe('joinLabel', () => {
  it('says what gates a YAML step: its when: condition and a non-default trigger_rule', () => {
    expect(joinLabel({ when: "$a.output == 'x'", triggerRule: 'one_success' })).toEqual({
      text: "when $a.output == 'x' · any one succeeds",
      title: "when: $a.output == 'x'\ntrigger_rule: one_success",
      when: true,
    });
    expect(joinLabel({ triggerRule: 'all_success' }).text).toBe('');
    expect(joinLabel(undefined).text).toBe('');
    expect(joinLabel({ when: 'x'.repeat(60) }).text).toHaveLength(5 + 26);
  });
});
