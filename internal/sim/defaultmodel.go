package sim

import "github.com/sloserve/sloserve/internal/profile"

// DefaultModelName names the model DefaultModel profiles.
const DefaultModelName = profile.InferAllModelName

// DefaultModel returns the profile `sloserve sim` uses when no model is configured: Inception on
// InferAll's three VM sizes and on Lambda (profile.InferAllInception).
func DefaultModel() profile.Model { return profile.InferAllInception() }
