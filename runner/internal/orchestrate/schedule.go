package orchestrate

import "github.com/onelayerdown/runner/runner/internal/measure"

// ScheduleVersion names the algorithm by which Run orders the requests of an experiment in
// shuffled order (measure.ScheduleVersion). A new folder records it and a resume checks it
// against the folder's, so that the runner, which only asks Run to send the requests, can
// name the order without knowing how it is drawn.
const ScheduleVersion = measure.ScheduleVersion
