; verispec certificate: crop-full
; obligation: crop: After accepting a of gamma drafts the target cache keeps exactly L+a entries: the prefix, the pending token and the accepted drafts, and not the rejected draft.
; convention: no crop: the full L + gamma written by the verify pass (docs/explanation/index-conventions.md#crops)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun accepted () Int)
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= accepted 0))
(assert (<= accepted gamma))
(assert (not (= (+ L gamma) (+ L accepted))))
(check-sat)
