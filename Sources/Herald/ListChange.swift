/// What one accepted change did to a ``RemoteList``, for observers that patch rather than
/// redraw (a table view's row reload versus its insert/delete animation).
public enum ListChange: Sendable, Equatable {
    /// The element at this position was replaced, or appended there (`assign`, `append`).
    case index(Int)
    /// The elements at `range` (positions before the change) were replaced by `inserted`
    /// new ones (`splice`); when the counts differ, every later position shifted.
    case structural(Range<Int>, inserted: Int)
    /// The whole list was replaced (`set`, `del`, a fetch after a missed change), or this is
    /// the first call of an observation.
    case whole
    /// The same list at the same rev, announced again (`touch`).
    case touched
}
