package kafka

// followRecreated moves the Source to the new instance of each consumed
// topic the broker no longer knows by the ID the client holds (the topic
// was deleted, and perhaps created again under a new ID). The client,
// which would otherwise refuse the new instance for good, forgets the old
// one (kgo.Client.PurgeTopicsFromClient) and subscribes to the name again
// (AddConsumeTopics): the group is assigned the new topic's partitions and
// consumes them from their start (no offset is committed for them). The
// old partitions' tracked records are dropped and their deliveries lose
// their lease: those records were deleted with their topic, and no offset
// of theirs is committed onto the new one.
func (s *Source) followRecreated(topics []string) {
	if len(topics) == 0 {
		return
	}
	s.mu.Lock()
	for k, p := range s.parts {
		for _, t := range topics {
			if k.topic == t {
				s.disownLocked(k, p)
			}
		}
	}
	s.mu.Unlock()
	for _, t := range topics {
		s.log.Warn(recreatedLog, "recreated_topic", t)
	}
	s.cl.PurgeTopicsFromClient(topics...)
	s.cl.AddConsumeTopics(topics...)
}

// recreatedLog is the warning followRecreated logs for each topic.
const recreatedLog = "consumed topic deleted or recreated: following its new instance from the start; records of the old one not yet committed went with it"
