package sim

import (
	"container/list"
	"sync"
)

// prefixCache is a block-level prefix cache over prompt token ids, like vLLM's automatic prefix
// caching: a prompt is cut into full blocks of blockSize tokens; each block is keyed by a hash
// of its tokens chained with the key of the block before it, so a block hits only when the
// whole prefix up to it matches. At most capacity blocks are kept, least recently used first out.
type prefixCache struct {
	mu        sync.Mutex
	blockSize int
	capacity  int
	lru       *list.List // of uint64 keys, most recently used at the front
	blocks    map[uint64]*list.Element

	queries int64 // prompt tokens looked up
	hits    int64 // prompt tokens found
}

func newPrefixCache(blockSize, capacity int) *prefixCache {
	return &prefixCache{
		blockSize: blockSize,
		capacity:  capacity,
		lru:       list.New(),
		blocks:    make(map[uint64]*list.Element),
	}
}

// blockKeys returns the chained keys of the first n full blocks of ids.
func (c *prefixCache) blockKeys(ids []int, n int) []uint64 {
	keys := make([]uint64, n)
	var h uint64 = 14695981039346656037 // FNV-1a offset basis
	for b := range n {
		for _, id := range ids[b*c.blockSize : (b+1)*c.blockSize] {
			for s := 0; s < 64; s += 8 {
				h ^= uint64(id>>s) & 0xff
				h *= 1099511628211 // FNV-1a prime
			}
		}
		keys[b] = h
	}
	return keys
}

// lookup returns how many leading prompt tokens are cached. As in vLLM, the last prompt token is
// always computed, so a fully cached prompt still misses its last block.
func (c *prefixCache) lookup(ids []int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	if len(ids) > 0 {
		n = (len(ids) - 1) / c.blockSize
	}
	hit := 0
	for _, k := range c.blockKeys(ids, n) {
		e, ok := c.blocks[k]
		if !ok {
			break
		}
		c.lru.MoveToFront(e)
		hit++
	}
	cached := hit * c.blockSize
	c.queries += int64(len(ids))
	c.hits += int64(cached)
	return cached
}

// insert caches every full block of ids, evicting the least recently used beyond capacity.
func (c *prefixCache) insert(ids []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.blockKeys(ids, len(ids)/c.blockSize) {
		if e, ok := c.blocks[k]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.blocks[k] = c.lru.PushFront(k)
	}
	for c.lru.Len() > c.capacity {
		e := c.lru.Back()
		c.lru.Remove(e)
		delete(c.blocks, e.Value.(uint64))
	}
}

// reset empties the cache; the hit counters keep counting, as vLLM's do.
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.blocks)
}

// stats returns the queried and hit token counts and the number of cached blocks.
func (c *prefixCache) stats() (queries, hits int64, blocks int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries, c.hits, c.lru.Len()
}
