package app

import "github.com/sloserve/sloserve/internal/gateway/gatewaytest"

// Test helpers shared with package gateway's tests (package gatewaytest): the stack tests moved
// here with the composition root (issue #15 item 6) and build the same requests.
type fixedPolicy = gatewaytest.FixedPolicy

var (
	request = gatewaytest.Request
	body    = gatewaytest.Body
	diff    = gatewaytest.Diff
)

// argmax is the index of row's largest value (the first of equals).
func argmax(row []float32) int {
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	return best
}
