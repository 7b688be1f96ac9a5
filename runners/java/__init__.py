"""Java: Maven builds, the JDK each revision gets, and the tools coevo runs beside Maven (the JUnit
console launcher, JaCoCo with coevo's per-test listener, PIT) and fetches from Maven Central.

Uses :mod:`runners.environments` (EnvSpec), :mod:`runners.sandbox`, the shared types at the top of
:mod:`runners` (build results, test results, mutants)."""
