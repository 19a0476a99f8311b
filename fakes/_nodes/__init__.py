"""The nodes a client sends messages to (each behind :class:`fakes._node.Node`):
``$cbs`` (:mod:`.cbs`), an entity's ``$management`` (:mod:`.management`), the transaction
coordinator (:mod:`.coordinator`) and the entity itself (:mod:`.entity`)."""
