//go:build !linux || ternportable

package upstream

import "testing"

// udpPaths: here one, a socket per query through the netpoller.
var udpPaths = []udpPath{{name: "net", set: func(testing.TB, *Client) {}}}
