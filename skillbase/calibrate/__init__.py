"""Classification thresholds from a population of profiles (Otsu), with provenance."""
