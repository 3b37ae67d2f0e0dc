package results

// The in-package test fixtures, for the external tests that build folders with resultstest
// (which imports this package, so in-package tests cannot use it).
var (
	TestExperiment = testExperiment
	TestRunInfo    = testRunInfo
	FakeRequest    = fakeRequest
	FailedRequest  = failedRequest
	T0             = t0
)
