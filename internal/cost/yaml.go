package cost

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// maxCatalogBytes bounds a catalog file.
const maxCatalogBytes = 4 << 20

// Load reads a YAML catalog (the shape of examples/catalog.yaml). Fields left out keep the
// values of DefaultCatalog for the billing, serverless and spot sections; if types is given it
// replaces the default list. Unknown fields are errors. The result is validated.
func Load(r io.Reader) (Catalog, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCatalogBytes+1))
	if err != nil {
		return Catalog{}, fmt.Errorf("read catalog: %w", err)
	}
	if len(data) > maxCatalogBytes {
		return Catalog{}, fmt.Errorf("read catalog: larger than %d bytes", maxCatalogBytes)
	}
	c := DefaultCatalog()
	c.Types = nil
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Catalog{}, fmt.Errorf("parse catalog: %w", err)
	}
	if c.Types == nil {
		c.Types = DefaultCatalog().Types
	}
	if err := c.Validate(); err != nil {
		return Catalog{}, fmt.Errorf("catalog: %w", err)
	}
	return c, nil
}

// Marshal writes c as YAML in the form Load reads.
func Marshal(w io.Writer, c Catalog) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	return enc.Close()
}
