; verispec certificate: draft-sync-no-catch-up
; obligation: draft-sync: The draft cache (L-1+gamma entries: d_gamma is never fed) is cropped and caught up so that it covers exactly the committed tokens with KV, [0, L+a), including after full acceptance.
; convention: crop like the target, no catch-up (meta-pytorch/gpt-fast speculative_decode feeds the last draft after full acceptance; docs/explanation/index-conventions.md#draft-cache-sync)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun accepted () Int)
(define-fun t1 () Int (+ L accepted))
(define-fun t2 () Int (+ (- L 1) gamma))
(define-fun t3 () Int (ite (<= t1 t2) t1 t2))
(define-fun t4 () Int (* accepted 0))
(assert (>= L 1))
(assert (>= gamma 1))
(assert (>= accepted 0))
(assert (<= accepted gamma))
(assert (not (and (>= t3 0) (<= t3 t2) (<= t3 t1) (>= t4 0) (= (+ t3 t4) t1))))
(check-sat)
