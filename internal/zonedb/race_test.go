//go:build race

package zonedb

// raceEnabled: the race detector is on (TestManyZones then loads fewer
// zones: 10,000 take about 20 s under it on a loaded machine).
const raceEnabled = true
