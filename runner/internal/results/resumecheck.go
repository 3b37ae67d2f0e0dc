package results

import (
	"fmt"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// CheckResume reports whether the folder whose manifest is m may be finished by a run of exp as
// shard (nil: the whole plan, without --shard) by a runner that draws a shuffled order by the
// algorithm schedule. The rows already recorded must be continued by the same requests in the
// same order: the experiment file must be the one the run began from, the shard the same part
// of the plan, and a shuffled order drawn by the same algorithm.
//
// The caller passes schedule in because the algorithm belongs to the code that draws the order;
// a folder only records its name.
func (m *Manifest) CheckResume(exp *experiment.Experiment, shard *Shard, schedule string) error {
	if err := m.CheckExperiment(exp.Source); err != nil {
		return err
	}
	if err := sameShard(m.Shard, shard); err != nil {
		return err
	}
	if exp.Order.Mode == "shuffled" && m.Runner.Schedule != schedule {
		// The same seed gives another order under another algorithm: the rows sent now would
		// repeat or skip repetition numbers of those already recorded.
		was := m.Runner.Schedule
		if was == "" {
			was = "an earlier one"
		}
		return fmt.Errorf("the folder's shuffled order was drawn by %s (runner %s), this runner draws it by %s: finish it with that runner, or start a new folder",
			was, m.Runner.Version, schedule)
	}
	return nil
}

// sameShard reports whether a folder whose manifest records the shard was (nil: the whole plan)
// may be resumed as the shard now (nil: without --shard): it must be the same part of the plan.
func sameShard(was, now *Shard) error {
	switch {
	case was == nil && now == nil:
		return nil
	case was == nil:
		return fmt.Errorf("the folder holds the whole plan, not a shard: resume it without --shard (this run is shard %d of %d)", now.Index, now.Count)
	case now == nil:
		return fmt.Errorf("the folder is shard %d of %d: resume it with --shard %d/%d", was.Index, was.Count, was.Index, was.Count)
	case was.Index != now.Index || was.Count != now.Count || was.Fingerprint != now.Fingerprint:
		return fmt.Errorf("the folder is shard %d of %d, but --shard names shard %d of %d (index from %s): resume it with --shard %d/%d",
			was.Index, was.Count, now.Index, now.Count, now.Source, was.Index, was.Count)
	}
	return nil
}
