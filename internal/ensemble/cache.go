package ensemble

import "sync"

// Cache is Cocktail's model cache (§4): the selection made for a <latency, accuracy> constraint
// is kept and reused by later requests with the same constraint, so the O1/O2 search runs once
// per constraint. It is safe for concurrent use; the zero value is not — use NewCache.
type Cache struct {
	mu     sync.Mutex
	byKey  map[Constraint]Selection
	hits   uint64
	misses uint64
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{byKey: map[Constraint]Selection{}} }

// Get returns the selection cached for c.
func (c *Cache) Get(k Constraint) (Selection, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.byKey[k]
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return s, ok
}

// MaxCacheEntries bounds a Cache: a Put of a new constraint into a full cache drops every entry
// first (the selections are recomputed on demand), so that clients choosing many constraints
// cannot grow it without bound.
const MaxCacheEntries = 1024

// Put stores s under its constraint, replacing any previous selection.
func (c *Cache) Put(s Selection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[s.Constraint]; !ok && len(c.byKey) >= MaxCacheEntries {
		clear(c.byKey)
	}
	c.byKey[s.Constraint] = s
}

// Invalidate drops every cached selection (call it when the model catalog changes).
func (c *Cache) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byKey)
}

// Stats returns the number of hits and misses so far.
func (c *Cache) Stats() (hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// SelectCached returns the cached selection for k, or runs Select and caches its result.
func (c *Cache) SelectCached(models []Model, k Constraint, cfg Config) (Selection, error) {
	if s, ok := c.Get(k); ok {
		return s, nil
	}
	s, err := Select(models, k, cfg)
	if err != nil {
		return Selection{}, err
	}
	c.Put(s)
	return s, nil
}
