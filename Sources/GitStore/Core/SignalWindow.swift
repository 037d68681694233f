import CPackFormat

/// A stretch of a run during which SIGINT, SIGTERM and SIGHUP are only noted, for the run to
/// stop its work and end by the signal itself (a fetch listing and downloading: it stores what
/// it got first). The handler is the index lock clean-up's (`lock_cleanup.c`): neither saves and
/// puts back the other's action, and a signal noted in the window leaves the lock files alone,
/// as the run goes on holding them.
public enum SignalWindow {
    /// Opens the window, forgetting any signal noted before.
    public static func open() { tidemark_signal_window_open() }

    /// Closes the window: the signals act as before it opened.
    public static func close() { tidemark_signal_window_close() }

    /// The first signal noted since the window opened; nil when none came.
    public static var received: Int32? {
        let number = tidemark_signal_window_received()
        return number == 0 ? nil : number
    }
}
