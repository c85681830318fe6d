#ifndef HERALD_PREFETCH_H
#define HERALD_PREFETCH_H

/* A hint to bring the cache line at `address` in for reading (PublishLookahead). Never
 * faults: a bad address is ignored by the processor. */
static inline void herald_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
