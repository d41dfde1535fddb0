package perf

import "errors"

func runTCP(env *loopEnv, sh share, c *Counters) (int64, error) {
	return 0, errors.New("TCP mode not implemented yet")
}
