package tune

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Cache keeps run results (any JSON value) keyed by (policy, options, trace, seed) in memory and, when Dir is
// set, one small JSON file per key under Dir (the ignored .cache/tune). Salt is part of every
// key: give it something that changes whenever the code or the inputs do (ExecutableSalt: a
// digest of the running binary), so a stale entry is never read. Safe for concurrent use.
type Cache struct {
	Dir  string
	Salt string

	mu  sync.Mutex
	mem map[string][]byte
}

// NewCache returns a cache in dir (empty: memory only) with the given salt.
func NewCache(dir, salt string) *Cache {
	return &Cache{Dir: dir, Salt: salt, mem: map[string][]byte{}}
}

func (c *Cache) file(key string) string {
	h := sha256.Sum256([]byte(c.Salt + "\x00" + key))
	return filepath.Join(c.Dir, hex.EncodeToString(h[:16])+".json")
}

// Get decodes the value stored under key into v and reports whether there was one.
func (c *Cache) Get(key string, v any) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	b, ok := c.mem[key]
	c.mu.Unlock()
	if !ok && c.Dir != "" {
		raw, err := os.ReadFile(c.file(key))
		if err != nil {
			return false
		}
		var e entry
		if json.Unmarshal(raw, &e) != nil || e.Key != key {
			return false
		}
		b, ok = e.Value, true
		c.mu.Lock()
		c.mem[key] = b
		c.mu.Unlock()
	}
	return ok && json.Unmarshal(b, v) == nil
}

// entry is one cache file: the key in clear (a hash collision reads as a miss) and the value.
type entry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Put stores v (JSON) under key; a failed write only loses the entry.
func (c *Cache) Put(key string, v any) {
	if c == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.mem[key] = b
	c.mu.Unlock()
	if c.Dir == "" {
		return
	}
	raw, err := json.Marshal(entry{Key: key, Value: b})
	if err != nil || os.MkdirAll(c.Dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(raw)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), c.file(key)) != nil {
		os.Remove(f.Name())
	}
}

// ExecutableSalt returns a digest of the running binary: cached outcomes are reused only by the
// same build (any code change, the policies' defaults included, invalidates them).
func ExecutableSalt() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("tune: cache salt: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("tune: cache salt: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("tune: cache salt: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}
