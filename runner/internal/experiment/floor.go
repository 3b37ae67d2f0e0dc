package experiment

import (
	"fmt"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
)

// PromptFloorWarnings returns a warning for every config whose prompt_tokens is below what its
// engine bills for the shortest prompt on its route, where the engine table knows that floor
// (enginefacts.PromptFloor): no prompt of that length exists, so the run will fail the
// config's requests as prompt_too_short. A file with such a config is still valid: the other
// configs run.
func PromptFloorWarnings(cfgs []Config) []string {
	var out []string
	for _, c := range cfgs {
		n := c.Request.PromptTokens
		if n <= 0 {
			continue
		}
		floor, ok := enginefacts.PromptFloor(c.Server.Engine, c.Request.API)
		if !ok || n >= floor {
			continue
		}
		out = append(out, fmt.Sprintf("config %s: prompt_tokens %d is below the %d tokens engine %s bills for its shortest %s prompt, so its requests will fail as prompt_too_short",
			c.Label, n, floor, c.Server.Engine, c.Request.API))
	}
	return out
}
