"""Java: Maven builds, the JDK each revision gets, and the tools coevo runs beside Maven (the JUnit
console launcher, JaCoCo with coevo's per-test listener, PIT) and fetches from Maven Central.

Uses the EnvSpec of :mod:`runners.environments`, :mod:`runners.sandbox`, and the shared types at
the top of :mod:`runners` (build and test results, mutants)."""
