package main

import (
	"slices"
	"testing"
)

func TestParseReplicaCounts(t *testing.T) {
	for _, tc := range []struct {
		in     string
		max    int
		counts []int
		ok     bool
	}{
		{"", 0, nil, true},
		{"3", 3, []int{1, 2, 3}, true},
		{"1,2,3", 3, []int{1, 2, 3}, true},
		{"1, 4", 4, []int{1, 4}, true},
		{"2,2", 0, nil, false},
		{"0", 0, nil, false},
		{"x", 0, nil, false},
		{"1,,2", 0, nil, false},
	} {
		n, c, err := parseReplicaCounts(tc.in)
		if (err == nil) != tc.ok || n != tc.max || !slices.Equal(c, tc.counts) {
			t.Errorf("parseReplicaCounts(%q) = %d, %v, %v; want %d, %v, ok %v", tc.in, n, c, err, tc.max, tc.counts, tc.ok)
		}
	}
}
