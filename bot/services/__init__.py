"""Application services: admin and feedback commands, the review desk, the reviewed-answer courier."""
