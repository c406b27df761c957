//go:build !linux

package models

import "time"

// threadCPUTime is unavailable off Linux; MeasureProfile falls back to the wall clock.
func threadCPUTime() (time.Duration, bool) { return 0, false }
