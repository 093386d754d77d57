"""The deterministic rule engine: vocabulary, rules, trace, ranking (`skillbase.engine`)."""
