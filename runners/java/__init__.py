"""Java: Maven builds, the JDK each revision gets, and the tools coevo runs beside Maven (the JUnit
console launcher, JaCoCo with coevo's per-test listener, PIT and its report) and fetches from
Maven Central; what a judge tree keeps of a build (``outputs``); Java's row of the toolchain table
(``toolchain``: its environments, cross runs and mutation).

Uses :mod:`runners.environments`' EnvSpec and file readers (``toolchain`` also its images and
Environment type), :mod:`runners.sandbox`, and the shared types at the top of :mod:`runners`
(build and test results, mutants)."""
