// Package pgtest gives tests a PostgreSQL to run against: [URL] reads the
// server scripts/test starts (AIBUDDY_TEST_PG_URL) and fails the test when
// it is missing and AIBUDDY_REQUIRE_PG=1 (set by scripts/test, so CI can
// never skip the PostgreSQL tests silently), else skips it; [Schema]
// names a schema of its own for one test, dropped at the test's end.
package pgtest
