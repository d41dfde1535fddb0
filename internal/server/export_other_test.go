//go:build !linux || ternportable

package server

// AnswersFromQueryAddress: the portable loop lets the kernel pick an
// answer's source address.
const AnswersFromQueryAddress = false
