import Dispatch

extension ValueSource {
    /// Calls a `@MainActor` handler with the current value at once, then with every change,
    /// in revision order (each change is queued from the source's serial queue to the main one).
    ///
    ///     let watching = theme.observeOnMain { theme, rev in self.render(theme) }
    /// - Parameter handler: gets the value (nil when unset, deleted or an input is missing)
    ///   and its revision, on the main actor.
    /// - Returns: the observation; releasing it or `cancel()` stops the calls, also calls
    ///   already queued for the main actor.
    public func observeOnMain(_ handler: @escaping @MainActor (Value?, Int) -> Void) -> Observation {
        let live = LiveFlag(true)
        let inner = observeRevisions { value, revision in
            DispatchQueue.main.async {
                guard live.value else { return }
                MainActor.assumeIsolated { handler(value, revision) }
            }
        }
        return Observation {
            live.set(false)
            inner.cancel()
        }
    }

    /// A main-actor copy of this source, for view models and SwiftUI views: its ``MainActorValue/value``
    /// changes on the main actor only, so Observation's `onChange` fires there too.
    ///
    ///     @MainActor let theme = try await client.remoteValue(Theme.self, at: themeChannel).onMainActor()
    ///     Text(theme.value?.mode ?? "default")                 // SwiftUI re-renders on change
    /// - Returns: the mirror; it keeps this source alive.
    @MainActor public func onMainActor() -> MainActorValue<Value> {
        MainActorValue(self)
    }
}
