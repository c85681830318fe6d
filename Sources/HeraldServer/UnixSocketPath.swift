#if canImport(Glibc)
import Glibc
#endif

/// The file-system side of the Unix socket listener: making room for `bind` without taking
/// over a live daemon's socket or deleting something that is not a socket, giving the bound
/// socket its `unix_mode`, and removing only our own socket at the end.
///
/// Why so careful: `bind` fails on any existing path, and the old fix (unlink whatever socket
/// is there) let a second daemon silently steal the first one's clients, and an operator's
/// typo in `unix` could delete a regular file.
enum UnixSocketPath {
    /// Which socket file a listener bound, so closing removes that one and no successor's.
    struct Identity: Equatable {
        let device: UInt
        let inode: UInt
    }

    /// Makes `path` free for `bind`: nothing there is fine; a socket nobody answers on (a
    /// crashed daemon's) is removed; anything else is refused.
    /// - Parameter path: the `unix` path.
    /// - Returns: whether a stale socket was removed (worth a log line).
    /// - Throws: `UVError` naming the path: `EEXIST` when something other than a socket is
    ///   there, `EADDRINUSE` when a process accepts connections on it, or the error of the check.
    static func prepare(_ path: String) throws(UVError) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return false }
            throw UVError("unix " + path + ": cannot inspect the path", -errno)
        }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw UVError("unix " + path + " exists and is not a socket; refusing to replace it"
                + " (move it away or choose another \"unix\" path)", -EEXIST)
        }
        switch probe(path) {
        case 0, EAGAIN:
            // EAGAIN: the listener's backlog is full, which also means someone is listening.
            throw UVError("unix " + path + ": another process is listening on this socket (a running heraldd?);"
                + " refusing to take it over", -EADDRINUSE)
        case ECONNREFUSED:
            guard unlink(path) == 0 || errno == ENOENT else {
                throw UVError("unix " + path + ": cannot remove the stale socket", -errno)
            }
            return true
        case ENOENT:
            return false
        case let failure:
            throw UVError("unix " + path + ": cannot tell whether a process listens on the socket", -failure)
        }
    }

    /// Binds a listening-to-be socket at `path` and gives the file `mode`, before `listen`, so
    /// no client can connect while the umask's mode is still on it.
    ///
    /// Bound here rather than with `uv_pipe_bind` because libuv unlinks a path it bound when
    /// the handle closes, whatever is at the path by then; a handle opened on our descriptor
    /// (`uv_pipe_open`) leaves that to `removeIfOwn`.
    /// - Parameters:
    ///   - path: the `unix` path, free (see `prepare`).
    ///   - mode: `unix_mode`'s bits.
    /// - Returns: the socket's descriptor (close-on-exec) and the identity of its file.
    /// - Throws: `UVError` naming the path when `socket`, `bind` or `chmod` fails; nothing is
    ///   left behind then.
    static func bind(_ path: String, mode: Int) throws(UVError) -> (descriptor: Int32, identity: Identity) {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw UVError("socket for unix " + path, -errno) }
        guard var address = address(of: path) else {
            close(descriptor)
            throw UVError("bind unix " + path, -ENAMETOOLONG)
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let failure = errno
            close(descriptor)
            throw UVError("bind unix " + path, -failure)
        }
        var info = stat()
        guard chmod(path, mode_t(mode)) == 0, lstat(path, &info) == 0 else {
            let failure = errno
            close(descriptor)
            unlink(path)
            throw UVError("unix " + path + ": cannot set mode " + OctalMode.text(mode), -failure)
        }
        return (descriptor, Identity(device: UInt(info.st_dev), inode: UInt(info.st_ino)))
    }

    /// Removes the socket at `path` if it is still the one this daemon bound.
    /// - Parameters:
    ///   - path: the `unix` path.
    ///   - identity: what `bind` returned.
    static func removeIfOwn(_ path: String, identity: Identity) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK,
              Identity(device: UInt(info.st_dev), inode: UInt(info.st_ino)) == identity else { return }
        unlink(path)
    }

    /// Tries to connect to the socket without blocking.
    /// - Returns: 0 when something accepted the connection, else the `errno` of the attempt
    ///   (`ECONNREFUSED`: nobody listens).
    private static func probe(_ path: String) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        guard var address = address(of: path) else { return ENAMETOOLONG }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return status == 0 ? 0 : errno
    }

    /// The `sockaddr_un` for `path`, or nil when it does not fit `sun_path` with its NUL.
    private static func address(of path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let fits = withUnsafeMutableBytes(of: &address.sun_path) { raw -> Bool in
            guard bytes.count < raw.count else { return false }
            raw.copyBytes(from: bytes)
            return true
        }
        return fits ? address : nil
    }
}
