package dnstest

import (
	"runtime/debug"
	"unsafe"
)

// StackUse returns how deep into its goroutine's stack f went, in bytes
// (the high-water mark below the caller's frames: what a goroutine that
// runs f needs on top of its own frames), and false when it could not
// tell. Go grows a goroutine's stack by doubling and copying it, so the
// stack a goroutine keeps is the power of two above its deepest call
// plus the runtime's guard (928 bytes on linux/amd64); a frame's size is
// go build -gcflags=-S's "TEXT ... locals=".
//
// How: f runs on a new goroutine whose stack was first grown to 512 KiB,
// the region below its frame filled with a pattern, the collector off
// (it would shrink the stack); the deepest word no longer the pattern is
// the mark. A depth under 4 KiB (the measuring frame's margin) reads as
// 4 KiB. The collector is off process-wide meanwhile: not for parallel
// tests.
func StackUse(f func()) (int, bool) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	done := make(chan stackUse)
	go func() {
		growStack(stackGrowth)
		n, ok := stackHighWater(f)
		done <- stackUse{n, ok}
	}()
	u := <-done
	return u.n, u.ok
}

type stackUse struct {
	n  int
	ok bool
}

const (
	// stackGrowth * stackFrame: what growStack takes, so that the
	// goroutine's stack is 512 KiB (arrays above 64 KiB would go to the
	// heap).
	stackGrowth = 5
	stackFrame  = 60 << 10
	// stackSpan is the region filled below stackHighWater's frame,
	// stackMargin its top left alone (that frame's own locals and
	// the calls that fill and scan).
	stackSpan   = 256 << 10
	stackMargin = 4 << 10
	stackFill   = 0xa5a5a5a5a5a5a5a5
)

// growStack grows the goroutine's stack to hold n frames of stackFrame
// bytes.
//
//go:noinline
func growStack(n int) byte {
	var b [stackFrame]byte
	b[n] = byte(n)
	if n > 0 {
		b[1] = growStack(n - 1)
	}
	return b[n/2]
}

// stackHighWater runs f and returns how far below this frame it wrote.
//
//go:noinline
func stackHighWater(f func()) (int, bool) {
	var top uint64 // its address: the top of the region measured
	at := uintptr(unsafe.Pointer(&top))
	if d := at - calleeLocal(); d == 0 || d > stackMargin {
		return 0, false // top is not on this goroutine's stack
	}
	words := unsafe.Slice((*uint64)(unsafe.Add(unsafe.Pointer(&top), -stackSpan)), (stackSpan-stackMargin)/8)
	for i := range words {
		words[i] = stackFill
	}
	f()
	if uintptr(unsafe.Pointer(&top)) != at {
		return 0, false // the stack moved (words went with it, unfilled)
	}
	for i, w := range words {
		if w != stackFill {
			return stackSpan - 8*i, true
		}
	}
	return stackMargin, true
}

// calleeLocal returns the address of a local of its own frame, just below
// its caller's.
//
//go:noinline
func calleeLocal() uintptr {
	var x uint64
	return uintptr(unsafe.Pointer(&x))
}
