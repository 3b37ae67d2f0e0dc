package merge

// FleetRuns writes the folders of the fleet experiment's runs, for the external tests: one run
// of the whole plan and the shards of it.
var FleetRuns = fleetRuns
