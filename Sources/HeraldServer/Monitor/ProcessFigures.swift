#if canImport(Glibc)
import Glibc
#endif

/// Resource figures of the daemon's own process, read cheaply from `/proc/self` and
/// `getrusage` (a few system calls, no Foundation) for `/varz` and `/metrics`.
struct ProcessFigures: Sendable, Equatable {
    /// Resident set size in bytes (`/proc/self/statm`, second field × page size).
    var residentBytes: Int
    /// Virtual memory size in bytes (`/proc/self/statm`, first field × page size).
    var virtualBytes: Int
    /// Open file descriptors (entries of `/proc/self/fd`, less the one reading it).
    var openFDs: Int
    /// The soft limit on open file descriptors (`RLIMIT_NOFILE`).
    var maxFDs: Int
    /// User plus system CPU time in microseconds.
    var cpuMicroseconds: Int

    /// Reads the figures now.
    /// - Returns: the figures, or nil when `/proc` is not mounted (then the metrics leave them out).
    static func read() -> ProcessFigures? {
        guard let statm = readSmallFile("/proc/self/statm") else { return nil }
        let fields = statm.split(whereSeparator: { $0 == 32 || $0 == 10 })
        guard fields.count >= 2, let pages = Int(String(decoding: fields[0], as: UTF8.self)),
              let resident = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        let pageSize = max(1, sysconf(Int32(_SC_PAGESIZE)))
        guard let fds = countOpenFDs() else { return nil }
        var limit = rlimit()
        let maxFDs = getrlimit(fileLimitResource, &limit) == 0 ? Int(clamping: limit.rlim_cur) : 0
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu = (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000
            + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
        return ProcessFigures(residentBytes: resident * pageSize, virtualBytes: pages * pageSize,
                              openFDs: fds, maxFDs: maxFDs, cpuMicroseconds: cpu)
    }

    /// `RLIMIT_NOFILE` as Glibc's `getrlimit` wants it (its enum's raw value).
    private static var fileLimitResource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    private static func readSmallFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Array(buffer[0..<count])
    }

    private static func countOpenFDs() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDot { count += 1 }
        }
        // The directory being listed is itself an open descriptor.
        return max(0, count - 1)
    }
}
