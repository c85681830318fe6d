import CLibUV

/// Freed memory given back to the system (issue 32: after a user churned 40,000 queue
/// groups on another node and left, each node's RSS stayed 12–29 MiB above where it started,
/// and after 20,000 signal handlers 15 MiB: the tables had shrunk, but glibc's malloc kept
/// the freed blocks in its heaps). Once a tick the main loop asks malloc how much of its
/// heaps is free; when that is much (`returnFloorBytes`, a quarter of the heaps) and more
/// than after the last trim (`returnStepBytes`), it calls `malloc_trim`, at most once per
/// `returnIntervalMs`. A well-behaved daemon's heap has little free and pays a `mallinfo2`
/// a second (its cost grows with the free blocks; a trim took 6–8 ms after 100,000 group
/// subscriptions left, 0.1–0.2 ms when there was little to give back).
extension Server {
    /// Free heap bytes below which nothing is given back.
    static let returnFloorBytes = 4 << 20
    /// How much more must be free than after the last trim (a teardown that goes on after a
    /// trim frees the rest in steps).
    static let returnStepBytes = 1 << 20
    /// The least time between two trims.
    static let returnIntervalMs = 2_000

    /// From the tick: trims malloc's heaps when they hold much free memory.
    func returnFreedMemoryIfDue(now: Int) {
        guard now - lastMemoryReturn >= Self.returnIntervalMs else { return }
        var free = 0
        var heap = 0
        herald_malloc_heap(&free, &heap)
        // `fordblks` still counts what a trim gave back: the next trim waits until that much
        // more was freed (the figure is lowered as the freed memory is used again).
        trimmedFreeBytes = min(trimmedFreeBytes, free)
        guard free >= Self.returnFloorBytes, free - trimmedFreeBytes >= Self.returnStepBytes, free >= heap / 4 else { return }
        lastMemoryReturn = now
        trimmedFreeBytes = free
        let start = uv_hrtime()
        let released = herald_malloc_trim() == 1
        logger.debug("memory returned to the system", ["free_bytes": free, "heap_bytes": heap, "released": released,
                                                        "us": Int((uv_hrtime() &- start) / 1_000)])
    }
}
