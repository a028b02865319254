; verispec certificate: positions-reset
; obligation: positions: After a round that committed a+1 tokens, query row r of the next round sits at absolute position L+a+r (the new pending token at L'-1).
; convention: positions restarted after a crop (HF PR #30068 class (cache_position advanced wrongly))
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun accepted () Int)
(declare-fun row () Int)
(assert (>= L 1))
(assert (>= accepted 0))
(assert (>= row 0))
(assert (not (= row (+ (+ L accepted) row))))
(check-sat)
