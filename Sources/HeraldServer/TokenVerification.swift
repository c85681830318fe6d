import CLibUV
import HeraldBroker

/// One token, verified on libuv's thread pool so the KDF never stalls a loop: a parked
/// `hello`'s, or a monitor request's Basic password (`monitor_auth`).
///
/// `start` queues the work from the asker's loop (`uv_queue_work`); the pool thread runs
/// `PendingVerification.verify` with OpenSSL's PBKDF2 and touches nothing else; the
/// after-work callback runs on the same loop again and hands the verdict to `finished`.
/// A work request is not a handle (nothing to `uv_close`): the request's `data` holds this
/// object retained from `start` until the after-work callback, which releases it and frees
/// the request, and this object holds `finished` (and through it the connection), so
/// neither can go away meanwhile.
final class TokenVerification: @unchecked Sendable {
    /// What the loop does with the verdict: the job, and whether libuv cancelled it.
    typealias Finished = (TokenVerification, Bool) -> Void

    /// The token to verify; immutable, read by the pool thread.
    let pending: PendingVerification
    /// Called once on the asker's loop, never on the pool thread.
    private let finished: Finished
    /// The credentials that accepted the token: written by the pool thread, read after it
    /// on the loop (libuv's queue hand-off orders the two).
    private(set) var accepted: Set<TokenCredential> = []
    private let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)

    /// Creates the job. - Parameters: pending: the token and credentials; finished: the verdict's taker.
    init(_ pending: PendingVerification, finished: @escaping Finished) {
        self.pending = pending
        self.finished = finished
    }

    deinit {
        request.deallocate()
    }

    /// Queues the verification on the thread pool of `loop` (the connection's loop).
    /// - Returns: false when libuv refused the work; nothing is retained then.
    func start(on loop: UnsafeMutablePointer<uv_loop_t>) -> Bool {
        let retained = Unmanaged.passRetained(self)
        request.pointee.data = retained.toOpaque()
        let status = uv_queue_work(loop, request, { request in
            guard let request, let data = request.pointee.data else { return }
            Unmanaged<TokenVerification>.fromOpaque(data).takeUnretainedValue().run()
        }, { request, status in
            guard let request, let data = request.pointee.data else { return }
            let job = Unmanaged<TokenVerification>.fromOpaque(data).takeRetainedValue()
            job.finished(job, status != 0)
        })
        guard status == 0 else {
            retained.release()
            return false
        }
        return true
    }

    /// On a pool thread: the KDF for every slow credential, at a lower CPU priority.
    ///
    /// The pool has 4 threads by default and the loops may have fewer cores than that: at
    /// the default nice 0 a burst of wrong tokens took CPU from the loops (a ping's p99 went
    /// from 5 to 24 ms on 2 cores). At nice 10 the scheduler gives a loop thread that wakes
    /// up the CPU first; the KDFs use what is left. The daemon queues no other pool work, so
    /// leaving the thread niced costs nothing else.
    private func run() {
        _ = herald_set_thread_niceness(Self.niceness)
        accepted = pending.verify(derive: PBKDF2.derivation)
    }

    /// The `nice` value of a thread running a KDF (Linux: per thread).
    static let niceness: Int32 = 10
}
