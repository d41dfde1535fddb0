package main

import (
	"runtime"
	"runtime/debug"
)

// version is Tern's version as the build recorded it: the module version
// when built with 'go install …@version', otherwise "devel" with the VCS
// revision (and "-modified" for a dirty tree) when the build saw one.
// The Go version and platform follow, as 'go version' prints them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(info, ok) + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

// versionOf is version's build-dependent part, from ReadBuildInfo's
// results.
func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown" // built without module support
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-modified"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev[:min(len(rev), 12)] + modified
}
