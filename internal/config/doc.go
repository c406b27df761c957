// Package config is sloserve's serving configuration: the YAML file that `sloserve serve` reads,
// as documented structs with defaults and validation.
package config
