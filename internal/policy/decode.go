package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// Sections is the policies section of a sim or serve configuration: each policy's options,
// keyed by its registered name, in the policy's one Options schema.
type Sections map[string]yaml.Node

// Decoder returns the Env.Decode function for the named policy's section: it decodes the
// section strictly (unknown fields are errors naming the section) over the options it is
// given, leaves them untouched when the section is absent, and lets options that name files
// resolve them (resolve may be nil).
func (s Sections) Decoder(name string, resolve func(string) string) func(v any) error {
	return func(v any) error {
		n, ok := s[name]
		if !ok {
			return nil
		}
		b, err := yaml.Marshal(&n)
		if err != nil {
			return fmt.Errorf("policies.%s: %w", name, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("policies.%s: %w", name, err)
		}
		if r, ok := v.(PathResolver); ok && resolve != nil {
			r.ResolvePaths(resolve)
		}
		return nil
	}
}

// Check reports the first section that names no policy registered on one of ports.
func (s Sections) Check(ports ...Port) error {
	for name := range s {
		found := false
		for _, p := range ports {
			if _, ok := Lookup(p, name); ok {
				found = true
			}
		}
		if !found {
			var have []string
			for _, p := range ports {
				have = append(have, Names(p)...)
			}
			return fmt.Errorf("policies.%s: %w (have %v)", name, ErrUnknown, have)
		}
	}
	return nil
}

// PathResolver is implemented by policy options that name files: relative paths in a
// configuration file are relative to the file's directory.
type PathResolver interface {
	ResolvePaths(resolve func(string) string)
}

// Set sets the named policy's section from YAML text (a mapping), as a configuration file
// would: for programs that build a configuration (the demo, tests).
func (s Sections) Set(name, text string) error {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		return fmt.Errorf("policies.%s: %w", name, err)
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("policies.%s: want a mapping, got %q", name, text)
	}
	s[name] = *n.Content[0]
	return nil
}
