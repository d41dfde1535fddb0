//go:build !linux

package perf

import "errors"

// runMmsg needs Linux's sendmmsg/recvmmsg; elsewhere use EngineXnet.
func runMmsg(env *loopEnv, sh share, c *Counters) (int64, error) {
	return 0, errors.New("the mmsg engine needs Linux: use -engine xnet")
}
