import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Kills a test daemon (SIGKILL) and waits for it to exit, at most `seconds`.
///
/// A bounded `waitpid` loop rather than `Process.waitUntilExit()`: that was seen to hang on
/// a test-pool thread when Foundation missed the exit, which would stall a whole test run.
public func killAndReap(_ process: Process, seconds: Double = 10) {
    let pid = process.processIdentifier
    guard pid > 0 else { return }
    // `isRunning` alone is not trusted: it was seen false for a redis-server that was still
    // running (and was then left behind). A child not yet reaped answers 0 here.
    var early: Int32 = 0
    let state = waitpid(pid, &early, WNOHANG)
    if state == pid || (state == -1 && !process.isRunning) { return }
    kill(pid, SIGKILL)
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid || (reaped == -1 && errno == ECHILD) || !process.isRunning { return }
        usleep(2_000)
    }
}
