// Prints, one per line as hex, the share group records of __consumer_offsets (KIP-932) that
// Kafka 4.4's own generated classes write for fixed values: each key (type-prefixed) and
// value (version-prefixed). tests/oracle/test_share_group_records_vs_kafka.py encodes the same
// values with protocol/share_group_records.py and compares the bytes.
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.*;

public class ShareRecordsProbe {
    static final Uuid T = new Uuid(0L, 0xa1L);

    static void key(ApiMessage m) {
        System.out.println(HexFormat.of().formatHex(MessageUtil.toCoordinatorTypePrefixedBytes(m)));
    }

    static void value(ApiMessage m) {
        System.out.println(HexFormat.of().formatHex(MessageUtil.toVersionPrefixedBytes((short) 0, m)));
    }

    public static void main(String[] args) {
        key(new ShareGroupMemberMetadataKey().setGroupId("g").setMemberId("m"));
        value(new ShareGroupMemberMetadataValue().setRackId("r").setClientId("c")
            .setClientHost("/h").setSubscribedTopicNames(List.of("a", "b")));
        value(new ShareGroupMemberMetadataValue().setRackId(null).setClientId("c")
            .setClientHost("/h").setSubscribedTopicNames(List.of()));
        key(new ShareGroupMetadataKey().setGroupId("g"));
        value(new ShareGroupMetadataValue().setEpoch(7).setMetadataHash(-2L));
        key(new ShareGroupTargetAssignmentMetadataKey().setGroupId("g"));
        value(new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(3));
        value(new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(3).setAssignmentTimestamp(1234L));
        key(new ShareGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m"));
        value(new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
            new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(T).setPartitions(List.of(0, 2)))));
        key(new ShareGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m"));
        value(new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(4).setPreviousMemberEpoch(3)
            .setState((byte) 0).setAssignedPartitions(List.of(
                new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(T).setPartitions(List.of(1)))));
        key(new ShareGroupStatePartitionMetadataKey().setGroupId("g"));
        value(new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                .setTopicId(T).setTopicName("t").setPartitions(List.of(1))))
            .setInitializedTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                .setTopicId(T).setTopicName("t").setPartitions(List.of(0, 3))))
            .setDeletingTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicInfo()
                .setTopicId(T).setTopicName("t"))));
    }
}
