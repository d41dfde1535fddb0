package config

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseManyZones parses and validates a configuration of 10,000
// [[zone]] tables (a hosting provider's), the work tern serve and every
// reload or zone-add do before anything is loaded.
func BenchmarkParseManyZones(b *testing.B) {
	var cfg strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&cfg, "[[zone]]\norigin = \"z%d.test.\"\nfile = \"/zones/z%d.test.zone\"\n", i, i)
	}
	data := []byte(cfg.String())
	b.ReportAllocs()
	for b.Loop() {
		c, err := Parse("tern.toml", data)
		if err != nil || len(c.Zones) != 10000 {
			b.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
