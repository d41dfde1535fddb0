//go:build !unix

package cache

// mapped returns size bytes for a Responses' ring or sets.
func mapped(_ *Responses, size int) []byte { return make([]byte, size) }
