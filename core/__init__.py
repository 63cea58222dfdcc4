"""groundbot core: the grounded-answer pipeline and its rules (pure Python + numpy)."""
